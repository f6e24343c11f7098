"""The provisioning app's REST API: runs with their phases, wipe requests and certificates."""
