# The two commands the README promises; each does all its own set-up.
.PHONY: test demo setup

test:
	scripts/test

demo:
	scripts/demo

setup:
	scripts/setup
