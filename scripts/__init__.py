"""Small tools for the repository (not shipped in the wheel)."""
