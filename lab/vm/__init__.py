"""The VM tier: real Linux VMs (QEMU via libvirt) behind sushy-tools' Redfish emulator.

A test and demo harness beside the simulated lab; production code never imports it.
"""
