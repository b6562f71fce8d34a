"""A FastAPI app that enqueues a typed task from a request and waits for its result.

    leasehold serve                                                  # the coordinator
    leasehold worker examples.fastapi_app.tasks:registry             # its worker
    uvicorn examples.fastapi_app.app:app --port 8000                 # the app

    curl -s -X POST localhost:8000/reports -H 'content-type: application/json' \\
        -d '{"customer": "ada", "months": 3}'                        # {"job_id": 7}
    curl -s 'localhost:8000/reports/7?wait=10'                       # job 7's report

(run from the repository root, with the virtual environment active; the job id is the
one the POST answered). A job that is not a report is answered 404, as is a missing one.
It needs FastAPI and uvicorn, which leasehold itself depends on.
"""
