"""A Django project that enqueues a typed task from a view and a management command.

    leasehold serve                                                  # the coordinator
    leasehold worker examples.django_app.tasks:registry              # its worker
    python examples/django_app/manage.py enqueue_welcome ada@example.com
    python examples/django_app/manage.py runserver 8000              # POST /welcome?email=...

(run from the repository root, with the virtual environment active). It needs Django,
which leasehold does not install: ``pip install 'django>=4.2'``. An enqueue whose
idempotency key (``welcome:EMAIL``) another job already holds is refused: the command says
so in one line and exits 1, the view answers 409.
"""
