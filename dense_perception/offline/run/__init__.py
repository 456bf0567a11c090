"""One run of the model: the session (the model, the settings and the options, made once) and
the frame loop that takes an input's frames through the pipeline to its target."""
