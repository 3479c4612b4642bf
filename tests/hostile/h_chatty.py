"""Right answers that print 100 000 lines while they are tested: the data still gets out, full marks."""
ANSWERS = {"primal_trace": """def primal_trace(x1, x2):
    print(chr(10).join(f'working on line {i}' for i in range(100_000)))
    w1, w2 = x1, x2
    w3 = w1 * w2
    w4 = math.sin(w1)
    return {'w1': w1, 'w2': w2, 'w3': w3, 'w4': w4, 'w5': w3 + w4}"""}
EXPECT = {"score": 7, "flags": set(), "message": "dropped"}
