%% bench/cluster: waits for node Peer to go down (the benchmark kills it
%% with SIGKILL once this prints "ready").
-module(detect).
-export([main/1]).

main([Peer0]) ->
    Peer = list_to_atom(Peer0),
    pong = net_adm:ping(Peer),
    erlang:monitor_node(Peer, true),
    io:format("ready~n"),
    receive {nodedown, Peer} -> io:format("down~n") after 120000 -> io:format("timeout~n") end,
    init:stop().
