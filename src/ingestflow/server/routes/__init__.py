"""Routes per resource."""
