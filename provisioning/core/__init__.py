"""The run core: the engine and its phases, runs and their one exit (run_end), plans, gates,
completion, the sweep. It names nothing of the day-2 wing above it: day-2 work follows a run's
end as a registered follower."""
