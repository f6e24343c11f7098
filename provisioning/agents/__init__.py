"""The agent channel: check-in and sessions, the command queue Greenlight's phases use, the
agent's logs, the redactor that keeps a node's secrets out of what it relays, and the agent API.
Above the boot plane (a check-in redeems a boot credential), below the run core."""
