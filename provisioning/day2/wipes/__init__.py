"""Tenant wipes, one concept: a request names the nodes a tenant gave back (requests), each
node's erase ends in a certificate (certificates)."""
