"""The lab: simulated Redfish BMCs and in-band agents with fault injection.

Production apps (fleet, provisioning, acceptance) never import this package; they reach the lab
only over HTTP, exactly as they reach real hardware.
"""
