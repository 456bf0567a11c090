"""The camera's own motion: poses and trajectories, depth aligned over time, metres from moving."""
