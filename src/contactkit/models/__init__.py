"""Contact models: learned graph networks (gnn) and the online linear F/T model (linear)."""
