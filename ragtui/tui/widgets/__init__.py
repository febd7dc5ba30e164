"""The main screen's panes; each renders engine events or engine objects and nothing else."""
