"""Push sync of the fleet's inventory to DCIM systems (NetBox)."""
