"""Blank answers; the first cell writes well-formed records for every test cell's visible case before any test
runs (the hidden cases are not known yet: records for them too, with made-up numbers). Records that are there before
their cell are never judged."""
BLANK = True
PREPEND = ["""import os, torch
here = os.path.join(os.getcwd(), '..', 'probe')
right = {'w1': 2.0, 'w2': 3.0, 'w3': 6.0, 'w4': 0.9092974268256817, 'w5': 6.909297426825682}
for gid in ('test_primal_trace', 'test_central_difference', 'test_adjoint_trace'):
    for k in range(2):
        torch.save({'cell': gid, 'call': k, 'results': [[right]], 'patched': []}, os.path.join(here, f'{gid}.{k}.pt'))"""]
EXPECT = {"score": 0, "flags": {"record_forged"}, "message": "did not judge"}
