"""Rack runs: a rack-scale system (GB200/GB300 NVL72) brought up by its manifest's staged rules.

runs.py starts, advances and ends a rack run; stages.py does one stage's work (members started
at most `max_parallel` at once on the node engine, settled, retried, timed); verify.py observes
a stage's check; power.py gives a compute tray its forced power cycle; messages.py sends their
tasks and records each step in the audit.
"""
