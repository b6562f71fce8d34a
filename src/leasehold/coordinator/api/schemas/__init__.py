"""The wire models of requests and answers, split as the routes are."""
