"""Reading the Ascend host: toolkit, hardware, driver, tools, Python stack."""
