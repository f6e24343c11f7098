"""The REST API's shared parts: permissions, pagination, fields. Each app keeps its own api/."""
