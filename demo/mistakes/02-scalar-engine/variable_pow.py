def variable_pow(self, other):
    # The published tutorial's version: ln|a| makes the exponent's derivative "work" for a < 0,
    # where it does not exist.
    a = self.value
    if not isinstance(other, Variable):
        return Variable(a ** other, (self,), (other * a ** (other - 1),), "**")
    b = other.value
    return Variable(a ** b, (self, other), (b * a ** (b - 1), a ** b * math.log(abs(a))), "**")


def variable_rpow(self, other):          # other ** self, other a plain number
    return as_variable(other) ** self


Variable.__pow__ = variable_pow
Variable.__rpow__ = variable_rpow
