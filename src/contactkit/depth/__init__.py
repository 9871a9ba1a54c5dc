"""Learned penetration depth of a part (tight-tolerance paper §III-A, network of §V-B): a small MLP per
static part, trained offline from its mesh alone, queried for every candidate node of the moving part in
one batched call; the contact normal is the gradient of the depth."""
