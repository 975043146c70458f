"""The REST server over the service layer (`ingestflow serve`)."""
