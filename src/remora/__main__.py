from remora.cli import main

main()
