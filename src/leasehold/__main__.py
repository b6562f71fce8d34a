from leasehold.cli import main

main()
