"""Prints one string of 400 megabytes."""
APPEND = ["print('x' * 400_000_000)"]
EXPECT = {"score": 7, "flags": set(), "message": "dropped"}
