"""Right answers that print their inputs whenever they are called: what they print while the grader checks
them (hidden inputs included) must never be shown back."""
ANSWERS = {"primal_trace": """def primal_trace(x1, x2):
    print('ANSWER' + '-SAW', x1, x2)
    w1, w2 = x1, x2
    w3 = w1 * w2
    w4 = math.sin(w1)
    return {'w1': w1, 'w2': w2, 'w3': w3, 'w4': w4, 'w5': w3 + w4}""",
           "central_difference": """import sys
def central_difference(f, x, h):
    sys.stderr.write('ANSWER' + f'-SAW {x} {h}\\n')
    return (f(x + h) - f(x - h)) / (2 * h)"""}
EXPECT = {"score": 7, "flags": set(), "absent": ["ANSWER-SAW"]}
