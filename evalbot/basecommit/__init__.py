"""What a change is gated with, read at its base commit (the gate's settings and template), for both front ends."""
