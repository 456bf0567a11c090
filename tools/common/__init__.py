"""What the rooms and the tests share: the generated scenes, the plain reference formulas, and
the node run as its own process and played to over DDS."""
