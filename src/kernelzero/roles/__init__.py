"""The two roles' text interfaces: the Coder's and Proposer's prompts, one-shot examples and completion parsing."""
