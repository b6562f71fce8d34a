"""A FastAPI app that enqueues a typed task from a request and waits for its result.

    leasehold serve                                                  # the coordinator
    leasehold worker examples.fastapi_app.tasks:registry             # its worker
    uvicorn examples.fastapi_app.app:app --port 8000                 # the app

    curl -s -X POST localhost:8000/reports -H 'content-type: application/json' \\
        -d '{"customer": "ada", "months": 3}'                        # {"job_id": 1}
    curl -s 'localhost:8000/reports/1?wait=10'                       # the report

(run from the repository root, with the virtual environment active).
"""
