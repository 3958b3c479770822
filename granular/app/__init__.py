"""Running scenes for the command line and for parameter sweeps."""
