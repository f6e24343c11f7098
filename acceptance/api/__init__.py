"""The acceptance app's REST API: profiles, gate results and decisions."""
