"""How the scheduler's processes run, below the engine: the garbage collector's full passes
kept short in a process whose books are large (``gc_pacer``)."""
