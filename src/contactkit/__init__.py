"""contactkit."""
