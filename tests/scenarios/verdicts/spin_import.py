"""A scenario file that spins at import."""

while True:
    pass
