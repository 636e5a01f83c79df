%% Spawn-and-exit in Erlang: N processes that each send one message back and
%% end. The anchor for bench/ring's spawn row. Usage: erl -noshell -run spawn main N
-module(spawn).
-export([main/1]).

main([NS]) ->
    N = list_to_integer(NS),
    Main = self(),
    T0 = erlang:monotonic_time(nanosecond),
    spawn_all(N, Main),
    collect(N),
    T1 = erlang:monotonic_time(nanosecond),
    io:format("spawn N=~p us_per_process=~.2f~n", [N, (T1 - T0) / N / 1000]),
    halt().

spawn_all(0, _) -> ok;
spawn_all(I, Main) -> spawn(fun() -> Main ! I end), spawn_all(I - 1, Main).

collect(0) -> ok;
collect(I) -> receive _ -> collect(I - 1) end.
