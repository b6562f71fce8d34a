"""Background loops every coordinator runs: the reaper, the scheduler and retention."""
