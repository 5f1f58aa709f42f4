"""One execution and how a function is called: the execution object, the function
registry, warm function threads, forked processes, the trace and Lambda's context.
"""
