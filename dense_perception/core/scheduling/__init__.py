"""Who runs when: newest-wins hand-overs, the round robin of several cameras, the two-stage overlap
and the host threads."""
