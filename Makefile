# The two commands the README promises; each does all its own set-up.
# check is the quick tier for iterating (no VM, no -race; see scripts/check).
.PHONY: test demo setup check

test:
	scripts/test

demo:
	scripts/demo

setup:
	scripts/setup

check:
	scripts/check
