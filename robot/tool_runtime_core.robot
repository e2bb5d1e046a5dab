*** Settings ***
Documentation     The tool runtime core as an agent host meets it: register, run, fail cleanly.
Library           actors.testing.robotlib

*** Test Cases ***
Registered Tool Runs And Returns Its Output
    Register Python Tool    math/add    {"sum": inputs["a"] + inputs["b"]}
    ...    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}
    Execute Tool    math/add    {"a": 2, "b": 40}
    Last Result Should Succeed
    Last Output Should Be    {"sum": 42}

Scalar Output Is Wrapped
    Register Python Tool    math/answer    42
    Execute Tool    math/answer
    Last Output Should Be    {"result": 42}

Bad Arguments Are Rejected Before The Tool Runs
    Register Python Tool    math/half    inputs["n"] / 2
    ...    {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}
    Execute Tool    math/half    {"m": 1}
    Last Result Should Fail With    validation    'n' is a required property

A Raising Tool Gives A Failed Result
    Register Python Tool    math/boom    1 / 0
    Execute Tool    math/boom
    Last Result Should Fail With    execution    ZeroDivisionError
