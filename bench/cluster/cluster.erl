%% bench/cluster, Erlang's side: the same measures as cluster.lua, between
%% this node and Peer (another `erl -sname` node on this machine).
%% usage: erl -sname a -setcookie C -noshell -pa DIR -run cluster main PEER MODE N
%% (the peer is started with the same -pa DIR, so it has this module too)
-module(cluster).
-export([main/1, echo/0, sink/2, hello/1, big_sink/1]).

main([Peer0, Mode, N0]) ->
    Peer = list_to_atom(Peer0),
    N = list_to_integer(N0),
    pong = net_adm:ping(Peer),
    run(Mode, Peer, N),
    rpc:call(Peer, init, stop, []),
    init:stop().

run("pingpong", Peer, N) ->
    Echo = spawn(Peer, cluster, echo, []),
    loop(Echo, 1000),
    T = now_us(),
    loop(Echo, N),
    io:format("pingpong_us=~.2f~n", [(now_us() - T) / N]);
run("stream", Peer, N) ->
    Sink = spawn(Peer, cluster, sink, [self(), N]),
    receive ready -> ok end,
    T = now_us(),
    [Sink ! I || I <- lists:seq(1, N)],
    receive got_all -> ok end,
    io:format("stream_msgs_per_s=~.1f~n", [N / ((now_us() - T) / 1.0e6)]);
run("spawn", Peer, N) ->
    Me = self(),
    [begin spawn(Peer, cluster, hello, [Me]), receive hi -> ok end end || _ <- lists:seq(1, 100)],
    T = now_us(),
    [begin spawn(Peer, cluster, hello, [Me]), receive hi -> ok end end || _ <- lists:seq(1, N)],
    io:format("spawn_us=~.2f~n", [(now_us() - T) / N]);
run("big", Peer, N) ->
    Me = self(),
    Echo = spawn(Peer, cluster, echo, []),
    Sink = spawn(Peer, cluster, big_sink, [Me]),
    Big = binary:copy(<<0>>, N * 1024 * 1024),
    Sink ! Big,
    receive {arrived, _} -> ok end,
    Pinger = spawn(fun() -> ping(Me, Echo, []) end),
    timer:sleep(50),
    T = now_us(),
    Sink ! Big,
    Size = receive {arrived, S} -> S end,
    Took = now_us() - T,
    Pinger ! {stop, T},
    {P99, Count} = receive {p99, P, C} -> {P, C} end,
    io:format("big_gb_per_s=~.2f big_p99_ms=~.2f round_trips=~b~n", [Size / Took / 1.0e3, P99 / 1.0e3, Count]).

%% Round trips that start while the buffer is in flight count (the main
%% process says when that began).
ping(Boss, Echo, Times) ->
    T = now_us(),
    Echo ! {self(), ping},
    receive
        {stop, T0} ->
            Sorted = lists:sort([Rtt || {Start, Rtt} <- Times, Start >= T0]),
            Len = length(Sorted),
            P99 = case Len of 0 -> 0; _ -> lists:nth(max(1, (Len * 99 + 99) div 100), Sorted) end,
            Boss ! {p99, P99, Len};
        ping -> ping(Boss, Echo, [{T, now_us() - T} | Times])
    end.

big_sink(Boss) ->
    receive B -> Boss ! {arrived, byte_size(B)}, big_sink(Boss) end.

loop(_, 0) -> ok;
loop(Echo, I) ->
    Echo ! {self(), I},
    receive I -> loop(Echo, I - 1) end.

echo() ->
    receive {From, I} -> From ! I, echo() end.

sink(Boss, N) ->
    Boss ! ready,
    drain(N),
    Boss ! got_all.

drain(0) -> ok;
drain(N) -> receive _ -> drain(N - 1) end.

hello(Boss) -> Boss ! hi.

now_us() -> erlang:monotonic_time(microsecond).
