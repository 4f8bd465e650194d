"""Scoring: trust scores for answers (consistency, fact check, combination) and their queue."""
