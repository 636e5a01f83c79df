%% bench/entities, Erlang's side: the same primitives with a gen_server as
%% the entity: fork = gen_server:start (init done when it returns; on the
%% peer node through rpc), join = exit(Pid, kill), sync = gen_server:call,
%% async = gen_server:cast and a reply message. Medians of 5 batches, µs.
%% usage: erl -sname a -setcookie C -noshell -pa DIR -run entities main PEER N
-module(entities).
-behaviour(gen_server).
-export([main/1, init/1, handle_call/3, handle_cast/2]).

main([Peer0, N0]) ->
    Peer = list_to_atom(Peer0),
    N = list_to_integer(N0),
    pong = net_adm:ping(Peer),
    run("local", node(), N),
    run("remote", Peer, N div 4),
    rpc:call(Peer, init, stop, []),
    init:stop().

init([]) -> {ok, nil}.
handle_call(ping, _From, S) -> {reply, 1, S}.
handle_cast({async, From}, S) -> From ! pong, {noreply, S}.

start(Node) when Node =:= node() -> {ok, P} = gen_server:start(?MODULE, [], []), P;
start(Node) -> {ok, P} = rpc:call(Node, gen_server, start, [?MODULE, [], []]), P.

run(Where, Node, N) ->
    Forked = [start(Node) || _ <- lists:seq(1, 5 * (N div 5))],
    Fork = time(N div 5, fun() -> start(Node) end),
    Join = time_list(Forked, N div 5),
    E = start(Node),
    Sync = time(N, fun() -> gen_server:call(E, ping) end),
    Me = self(),
    Async = time(N, fun() -> gen_server:cast(E, {async, Me}), receive pong -> ok end end),
    io:format("fork_~s_us=~.2f join_~s_us=~.2f sync_~s_us=~.2f async_~s_us=~.2f~n",
              [Where, Fork, Where, Join, Where, Sync, Where, Async]).

time(N, F) ->
    median([begin T = now_us(), [F() || _ <- lists:seq(1, N)], (now_us() - T) / N end || _ <- lists:seq(1, 5)]).

%% join: dispose requests for already started servers, batch by batch.
time_list(Pids, N) ->
    Batches = split(Pids, N),
    median([begin T = now_us(), [exit(P, kill) || P <- B], (now_us() - T) / N end || B <- Batches]).

split([], _) -> [];
split(L, N) -> {A, B} = lists:split(N, L), [A | split(B, N)].

median(L) -> lists:nth((length(L) + 1) div 2, lists:sort(L)).
now_us() -> erlang:monotonic_time(microsecond).
