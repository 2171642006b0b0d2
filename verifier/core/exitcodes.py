"""Exit codes everywhere: 0 = all checked properties hold, 1 = a violation (counterexample
printed and written), 2 = usage or input error, 3 = stopped by a bound or budget before completion."""
EXIT_OK, EXIT_VIOLATION, EXIT_INPUT, EXIT_STOPPED = 0, 1, 2, 3


class InputError(Exception):
    """An engine refusing what it was given (a master it cannot reach, a checkpoint location that
    is not its run's): the command line says it in one line and exits 2, never a verdict."""
