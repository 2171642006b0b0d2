"""Exit codes everywhere: 0 = all checked properties hold, 1 = a violation (counterexample
printed and written), 2 = usage or input error, 3 = stopped by a bound or budget before completion."""
EXIT_OK, EXIT_VIOLATION, EXIT_INPUT, EXIT_STOPPED = 0, 1, 2, 3
