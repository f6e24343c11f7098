"""The day-2 wing: wipes and their requests, suspect nodes, burn-in and rollouts, how far nodes
are behind their manifest, operator moves, and the calls to the tenants' schedulers. Each
follows the run core's one exit (core/run_end.py) as a registered follower; nothing below names
this wing."""
