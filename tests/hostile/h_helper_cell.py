"""Right answers built on a helper function the learner defined in a cell of their own."""
PREPEND = ["""def product_rule_parts(a, b):
    \"\"\"My own helper: the two partial derivatives of a*b.\"\"\"
    return b, a"""]
ANSWERS = {"adjoint_trace": """def adjoint_trace(x1, x2):
    w = primal_trace(x1, x2)
    d_w1_from_product, d_w2 = product_rule_parts(w['w1'], w['w2'])
    return {'w1': d_w1_from_product + math.cos(w['w1']), 'w2': d_w2, 'w3': 1.0, 'w4': 1.0, 'w5': 1.0}"""}
EXPECT = {"score": 7, "flags": set()}
