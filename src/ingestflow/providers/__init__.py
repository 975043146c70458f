"""Model providers: endpoints from the environment, the model-server client, offline backends."""
