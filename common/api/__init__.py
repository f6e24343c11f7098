"""The REST API's shared parts: permissions, pagination, fields, filters. console/api/ uses them."""
