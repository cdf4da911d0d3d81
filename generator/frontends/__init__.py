"""Frontends: other descriptions of wire formats lowered into the schema language."""
