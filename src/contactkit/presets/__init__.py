"""World parameter presets shipped with contactkit (JSON files)."""
