*** Settings ***
Documentation     The client surface beyond tools against the reference MCP server
...               @modelcontextprotocol/server-everything (npm, in tests/interop, run with node over
...               stdio): resources, resource templates, prompts, completion and progress.
Library           OperatingSystem
Library           actors.testing.robotlib
Suite Setup       Find Server Everything
Test Setup        Start Runtime With Server    everything    ${NODE}    ${EVERYTHING}    stdio
Test Teardown     Stop Runtime

*** Variables ***
${ROOT}           ${CURDIR}/..
${EVERYTHING}     ${ROOT}/tests/interop/node_modules/@modelcontextprotocol/server-everything/dist/index.js
${TEXT_TEMPLATE}  demo://resource/dynamic/text/{resourceId}

*** Test Cases ***
Resources And Templates Are Listed
    Resources Should Include    everything    demo://resource/static/document/architecture.md
    ${templates}=    List Resource Templates    everything
    ${uris}=    Evaluate    [t.uri_template for t in $templates]
    Should Contain    ${uris}    ${TEXT_TEMPLATE}

A Text Resource Is Read
    Read Resource    everything    demo://resource/dynamic/text/7
    Last Result Should Succeed
    Resource Text Should Contain    Resource 7: This is a plaintext resource

A Binary Resource Reads As One Line
    Read Resource    everything    demo://resource/dynamic/blob/3
    Last Result Should Succeed
    Resource Text Should Contain    [resource demo://resource/dynamic/blob/3 text/plain,

A Static Document Is Read
    Read Resource    everything    demo://resource/static/document/architecture.md
    Resource Text Should Contain    Everything Server

Text Checks Fail When The Text Is Not There
    Read Resource    everything    demo://resource/dynamic/text/1
    Run Keyword And Expect Error    resource text * does not contain 'no such words'
    ...    Resource Text Should Contain    no such words
    Run Keyword And Expect Error    the last result has no messages (use Get Prompt first)
    ...    Prompt Text Should Contain    Resource

An Unknown Resource Fails With The Server's Reason
    ${result}=    Read Resource    everything    demo://resource/no/such/thing
    Should Not Be True    ${result.success}
    # The server answers -32602 (invalid params); the runtime may call that not_found or server_error.
    Should Contain Any    ${result.error_type}    not_found    server_error
    Should Contain    ${result.error}    Resource demo://resource/no/such/thing not found

An Unknown Server Is Not Found
    Read Resource    nowhere    demo://resource/dynamic/text/1
    Last Result Should Fail With    not_found    nowhere

Prompts Are Listed And Filled In
    Prompts Should Include    everything/simple-prompt    everything/args-prompt
    Get Prompt    everything/args-prompt    {"city": "Paris", "state": "Texas"}
    Last Result Should Succeed
    Prompt Text Should Contain    user: What's weather in Paris, Texas?

A Missing Prompt Argument Is A Validation Error
    Get Prompt    everything/args-prompt    {}
    Last Result Should Fail With    validation    city

An Unknown Prompt Is Not Found
    Get Prompt    everything/no-such-prompt
    Last Result Should Fail With    not_found

Prompt Arguments Are Completed
    ${departments}=    Complete Argument    everything    completable-prompt    department    Eng
    Should Be Equal    ${departments}    ${{["Engineering"]}}
    ${names}=    Complete Argument    everything    completable-prompt    name    ${EMPTY}
    ...    context={"department": "Sales"}
    Should Be Equal    ${names}    ${{["David", "Eve", "Frank"]}}

A Long Operation Reports Its Progress
    ${updates}=    Call Tool With Progress    everything/trigger-long-running-operation
    ...    {"duration": 0.4, "steps": 4}
    Last Result Should Succeed
    Last Text Should Contain    Steps: 4
    ${seen}=    Evaluate    [(u["progress"], u["total"]) for u in $updates]
    Should Be Equal    ${seen}    ${{[(1, 4), (2, 4), (3, 4), (4, 4)]}}

*** Keywords ***
Find Server Everything
    File Should Exist    ${EVERYTHING}
    ...    msg=server-everything is not installed: run make test (it runs npm ci --prefix tests/interop)
    ${node}=    Evaluate    shutil.which("node") or r"${ROOT}/tests/conformance/node_modules/.bin/node"
    File Should Exist    ${node}    msg=node is not installed (Node.js 18+)
    Set Suite Variable    ${NODE}    ${node}
