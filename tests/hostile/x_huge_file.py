"""Writes a 1 GB file."""
APPEND = ["with open('big.bin', 'wb') as fh:\n    for _ in range(1024):\n        fh.write(bytes(2**20))"]
EXPECT = {"score": 7, "flags": set()}
